"""Constants shared by the scheduler tests (imported by module name: tests/scheduler is not a package)."""

# 2023-11-14 22:00:00 UTC, a whole hour, so cron ticks land on predictable instants.
START = 1_699_999_200.0
