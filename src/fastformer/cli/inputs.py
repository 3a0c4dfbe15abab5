"""What the commands that take texts share: texts from the command line and/or a file, JSON lines out."""

from __future__ import annotations

from pathlib import Path


def texts_from(given: list[str], file: str | None, command: str, what: str = "texts") -> list[str]:
    """The texts given on the command line, then the non-blank lines of `file`; an error if there are none."""
    texts = list(given)
    if file:
        path = Path(file)
        if not path.is_file():
            raise SystemExit(f"fastformer {command}: {path}: no such file")
        texts += [line.rstrip("\n") for line in path.open(encoding="utf-8") if line.strip()]
    if not texts:
        raise SystemExit(f"fastformer {command}: give {what} or --file")
    return texts


def write_lines(lines: list[str], output: str | None) -> None:
    """To `output` if given, else to standard output."""
    if output:
        Path(output).write_text("\n".join(lines) + "\n")
    else:
        print("\n".join(lines))


def model_kind(model_dir: str) -> str:
    """ "news", "summarize" or "classification": what a trained folder holds, from its config.json's architectures."""
    import json

    config = Path(model_dir) / "config.json"
    if not config.is_file():
        raise SystemExit(f"{model_dir}: no config.json; expected a folder written by `fastformer train`")
    architectures = json.loads(config.read_text()).get("architectures") or []
    if "FastformerForNewsRecommendation" in architectures:
        return "news"
    if "FastformerForConditionalGeneration" in architectures:
        return "summarize"
    return "classification"
