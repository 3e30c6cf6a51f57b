"""The task-history pipeline: the engine's event streams archived as Parquet (by the worker's archiver), rolled
up per day, queue and task type by a PySpark job (``manage.py task_analytics``), and read by the console's
History page from ``TaskDailyRollup``."""
