# pprint, served to programs: pformat and pprint as CPython lays out dicts,
# lists and tuples (keys sorted, width 80).
def _pprint_repr(obj, sort_dicts):
    if isinstance(obj, dict):
        items = sorted(obj.items(), key=lambda kv: repr(kv[0]) if not isinstance(kv[0], (int, float, str)) else kv[0]) if sort_dicts else list(obj.items())
        return "{" + ", ".join([_pprint_repr(k, sort_dicts) + ": " + _pprint_repr(v, sort_dicts) for k, v in items]) + "}"
    if isinstance(obj, list):
        return "[" + ", ".join([_pprint_repr(v, sort_dicts) for v in obj]) + "]"
    if isinstance(obj, tuple):
        if len(obj) == 1:
            return "(" + _pprint_repr(obj[0], sort_dicts) + ",)"
        return "(" + ", ".join([_pprint_repr(v, sort_dicts) for v in obj]) + ")"
    return repr(obj)
def _pprint_format(obj, indent, allowance, width, sort_dicts, out):
    rep = _pprint_repr(obj, sort_dicts)
    if len(rep) <= width - indent - allowance or not isinstance(obj, (dict, list, tuple)) or len(obj) == 0:
        out.append(rep)
        return
    if isinstance(obj, dict):
        out.append("{")
        items = list(obj.items())
        if sort_dicts:
            items = sorted(items, key=lambda kv: kv[0])
        inner = indent + 1
        for i, (key, value) in enumerate(items):
            last = i == len(items) - 1
            krep = _pprint_repr(key, sort_dicts)
            out.append(krep + ": ")
            _pprint_format(value, inner + len(krep) + 2, allowance + 1 if last else 1, width, sort_dicts, out)
            if not last:
                out.append(",\n" + " " * inner)
        out.append("}")
        return
    opening, closing = ("[", "]") if isinstance(obj, list) else ("(", ")")
    if closing == ")" and len(obj) == 1:
        closing = ",)"
    out.append(opening)
    inner = indent + 1
    for i, value in enumerate(obj):
        last = i == len(obj) - 1
        _pprint_format(value, inner, allowance + len(closing) if last else 1, width, sort_dicts, out)
        if not last:
            out.append(",\n" + " " * inner)
    out.append(closing)
def _pprint_pformat(obj, indent=1, width=80, depth=None, compact=False, sort_dicts=True):
    out = []
    _pprint_format(obj, 0, 0, width, sort_dicts, out)
    return "".join(out)
def _pprint_pprint(obj, stream=None, indent=1, width=80, depth=None, compact=False, sort_dicts=True):
    print(_pprint_pformat(obj, indent, width, depth, compact, sort_dicts))
class pprint:
    pformat = _pprint_pformat
    pprint = _pprint_pprint
    pp = lambda obj, *a, **k: _pprint_pprint(obj, sort_dicts=False)
