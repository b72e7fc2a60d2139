"""The recordings API: the recorder starts, fills (turns, batches, video) and finishes recordings, and uploads blobs."""
