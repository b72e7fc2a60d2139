"""Statistics, activity and pay of a project (docs/stats.md), read from the database: ``tables`` (the statistics
tables, aggregated in the database), ``activity`` (time per person per day, and the pay it earns)."""
