"""The quality API: decisions on form work, qualifications, agreement and aggregation."""
