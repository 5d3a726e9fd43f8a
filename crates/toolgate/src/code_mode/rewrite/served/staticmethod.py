# @staticmethod: a class attribute that is called as it is, from the class or
# from an instance.
class _staticmethod:
    def __init__(self, function):
        self._function = function
    def __call__(self, *args, **kwargs):
        return self._function(*args, **kwargs)
