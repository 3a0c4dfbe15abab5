def main():
    raise SystemExit("todo")
