"""The quality pages: review of form work, qualifications, agreement, reviewers and annotators' records."""
