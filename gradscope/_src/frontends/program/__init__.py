"""``gradscope run``: a user's own program, run unchanged while its gradient calls are watched."""
