"""Storage plumbing under the actions: ``blobstore`` (reading stored files from local disk or S3) and ``hotsql`` (the
prepared SQL of the queries every upload makes)."""
