"""Quality control: requester review of form work (decisions), gold and qualifications, agreement and aggregation
of workers' answers, reviewers' agreement and annotators' records on demonstrations (docs/quality.md)."""
