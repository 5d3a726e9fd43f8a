# operator, served to programs (a subset of CPython's).
def _operator_itemgetter(*items):
    if len(items) == 1:
        item = items[0]
        return lambda obj: obj[item]
    return lambda obj: tuple([obj[i] for i in items])
def _operator_attr(obj, name):
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj
def _operator_attrgetter(*names):
    if len(names) == 1:
        name = names[0]
        return lambda obj: _operator_attr(obj, name)
    return lambda obj: tuple([_operator_attr(obj, n) for n in names])
def _operator_methodcaller(name, *args, **kwargs):
    return lambda obj: getattr(obj, name)(*args, **kwargs)
class operator:
    itemgetter = _operator_itemgetter
    attrgetter = _operator_attrgetter
    methodcaller = _operator_methodcaller
    add = lambda a, b: a + b
    sub = lambda a, b: a - b
    mul = lambda a, b: a * b
    truediv = lambda a, b: a / b
    floordiv = lambda a, b: a // b
    mod = lambda a, b: a % b
    pow = lambda a, b: a ** b
    neg = lambda a: -a
    eq = lambda a, b: a == b
    ne = lambda a, b: a != b
    lt = lambda a, b: a < b
    le = lambda a, b: a <= b
    gt = lambda a, b: a > b
    ge = lambda a, b: a >= b
    not_ = lambda a: not a
    truth = lambda a: bool(a)
    contains = lambda a, b: b in a
    getitem = lambda a, b: a[b]
    and_ = lambda a, b: a & b
    or_ = lambda a, b: a | b
    concat = lambda a, b: a + b
