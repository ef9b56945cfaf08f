"""Training: losses, schedules, checkpoints and the custom loop."""
