# statistics, served to programs (a subset of CPython's, same results).
import math as _statistics_math
def _statistics_data(data, least, what):
    data = list(data)
    if len(data) < least:
        raise ValueError(what)
    return data
def _statistics_ratio(x):
    # x as an exact (numerator, denominator), the denominator a power of two
    if isinstance(x, int):
        return x, 1
    m, e = _statistics_math.frexp(x)
    n = int(m * 9007199254740992)
    e -= 53
    if e >= 0:
        return n * 2 ** e, 1
    return n, 2 ** (-e)
def _statistics_exact(data):
    # (numerators, common denominator): the data as exact fractions
    pairs = [_statistics_ratio(x) for x in data]
    den = max([d for _, d in pairs])
    return [n * (den // d) for n, d in pairs], den
def _statistics_result(data, num, den):
    # num / den as CPython converts it: an int when the data are ints and it is whole
    if all(isinstance(x, int) for x in data) and num % den == 0:
        return num // den
    return num / den
def _statistics_mean(data):
    data = _statistics_data(data, 1, "mean requires at least one data point")
    nums, den = _statistics_exact(data)
    return _statistics_result(data, sum(nums), den * len(data))
def _statistics_fmean(data, weights=None):
    data = _statistics_data(data, 1, "fmean requires at least one data point")
    if weights is None:
        return _statistics_math.fsum(data) / len(data)
    weights = list(weights)
    return _statistics_math.fsum([x * w for x, w in zip(data, weights)]) / _statistics_math.fsum(weights)
def _statistics_median(data):
    data = sorted(_statistics_data(data, 1, "no median for empty data"))
    n = len(data)
    if n % 2 == 1:
        return data[n // 2]
    i = n // 2
    return (data[i - 1] + data[i]) / 2
def _statistics_median_low(data):
    data = sorted(_statistics_data(data, 1, "no median for empty data"))
    n = len(data)
    return data[n // 2] if n % 2 == 1 else data[n // 2 - 1]
def _statistics_median_high(data):
    data = sorted(_statistics_data(data, 1, "no median for empty data"))
    return data[len(data) // 2]
def _statistics_multimode(data):
    counts = {}
    for x in data:
        counts[x] = counts.get(x, 0) + 1
    if not counts:
        return []
    top = max(counts.values())
    return [x for x, c in counts.items() if c == top]
def _statistics_mode(data):
    modes = _statistics_multimode(data)
    if not modes:
        raise ValueError("no mode for empty data")
    return modes[0]
def _statistics_ss(data, c):
    return _statistics_math.fsum([(x - c) ** 2 for x in data])
def _statistics_spread(data, over):
    # n * sum of squared deviations, exactly, over `over` * n * n
    nums, den = _statistics_exact(data)
    n = len(data)
    total = sum(nums)
    return _statistics_result(data, n * sum([x * x for x in nums]) - total * total, den * den * n * over)
def _statistics_variance(data, xbar=None):
    data = _statistics_data(data, 2, "variance requires at least two data points")
    if xbar is not None:
        return _statistics_ss(data, xbar) / (len(data) - 1)
    return _statistics_spread(data, len(data) - 1)
def _statistics_pvariance(data, mu=None):
    data = _statistics_data(data, 1, "pvariance requires at least one data point")
    if mu is not None:
        return _statistics_ss(data, mu) / len(data)
    return _statistics_spread(data, len(data))
def _statistics_stdev(data, xbar=None):
    return _statistics_math.sqrt(_statistics_variance(data, xbar))
def _statistics_pstdev(data, mu=None):
    return _statistics_math.sqrt(_statistics_pvariance(data, mu))
def _statistics_quantiles(data, n=4, method="exclusive"):
    data = sorted(data)
    ld = len(data)
    if n < 1:
        raise ValueError("n must be at least 1")
    if ld < 2:
        raise ValueError("must have at least two data points")
    result = []
    if method == "inclusive":
        m = ld - 1
        for i in range(1, n):
            j, delta = divmod(i * m, n)
            interpolated = (data[j] * (n - delta) + data[j + 1] * delta) / n
            result.append(interpolated)
        return result
    m = ld + 1
    for i in range(1, n):
        j = i * m // n
        j = 1 if j < 1 else ld - 1 if j > ld - 1 else j
        delta = i * m - j * n
        interpolated = (data[j - 1] * (n - delta) + data[j] * delta) / n
        result.append(interpolated)
    return result
def _statistics_harmonic_mean(data):
    data = _statistics_data(data, 1, "harmonic_mean requires at least one data point")
    if any(x == 0 for x in data):
        return 0
    return len(data) / _statistics_math.fsum([1 / x for x in data])
def _statistics_geometric_mean(data):
    data = _statistics_data(data, 1, "geometric_mean requires a non-empty dataset containing positive numbers")
    return _statistics_math.exp(_statistics_math.fsum([_statistics_math.log(x) for x in data]) / len(data))
class statistics:
    StatisticsError = ValueError
    mean = _statistics_mean
    fmean = _statistics_fmean
    median = _statistics_median
    median_low = _statistics_median_low
    median_high = _statistics_median_high
    mode = _statistics_mode
    multimode = _statistics_multimode
    variance = _statistics_variance
    pvariance = _statistics_pvariance
    stdev = _statistics_stdev
    pstdev = _statistics_pstdev
    quantiles = _statistics_quantiles
    harmonic_mean = _statistics_harmonic_mean
    geometric_mean = _statistics_geometric_mean
