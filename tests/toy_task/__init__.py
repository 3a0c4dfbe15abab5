"""A toy task defined outside the package, to show that a task is one folder and one registry line (engine/task.py):
tests/tasks/test_toy_task.py registers it and drives it through the `fastformer` command."""
