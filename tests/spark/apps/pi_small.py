"""A tiny Spark application for the spark:submit tests: sums 0..99 and prints it."""

from pyspark.sql import SparkSession

spark = SparkSession.builder.appName("taskq-submit-test").config("spark.ui.enabled", "false").getOrCreate()
print("SUM", spark.range(100).groupBy().sum("id").collect()[0][0])
print("APP", spark.sparkContext.applicationId)
spark.stop()
