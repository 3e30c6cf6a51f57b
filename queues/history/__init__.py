"""The task-history pipeline: the engine's event streams exported as Parquet (by the worker's exporter), rolled
up per day, queue and task type by a PySpark job (``manage.py task_analytics``), and read by the console's
History page from ``TaskDailyRollup``."""
