"""Task metrics, each computed as the task's official scorer does."""
