"""A package of sample targets for gradscope's tests (``mypkg.models:FUNCTION``)."""
