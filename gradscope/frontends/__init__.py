"""Front-ends: the ways a computation comes into gradscope."""
