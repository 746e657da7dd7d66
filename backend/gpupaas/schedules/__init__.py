"""Auto-stop and schedules: time limits of instances (their extension), project schedules, and the
warning before an auto-stop. The worker's scheduler (workers/scheduler.py) acts on them."""
