# round(x, n) of a float, correctly rounded as CPython's is (half to even on the
# float's exact value), by way of format().
def _round(number, ndigits=None):
    if ndigits is None:
        return round(number)
    if isinstance(number, float) and ndigits >= 0:
        return float(format(number, "." + str(ndigits) + "f"))
    return round(number, ndigits)
