# heapq, served to programs (a subset of CPython's, same results).
def _heapq_down(heap, start, pos):
    item = heap[pos]
    while pos > start:
        parent = (pos - 1) >> 1
        if item < heap[parent]:
            heap[pos] = heap[parent]
            pos = parent
            continue
        break
    heap[pos] = item
def _heapq_up(heap, pos):
    end = len(heap)
    start = pos
    item = heap[pos]
    child = 2 * pos + 1
    while child < end:
        right = child + 1
        if right < end and not heap[child] < heap[right]:
            child = right
        heap[pos] = heap[child]
        pos = child
        child = 2 * pos + 1
    heap[pos] = item
    _heapq_down(heap, start, pos)
def _heapq_heappush(heap, item):
    heap.append(item)
    _heapq_down(heap, 0, len(heap) - 1)
def _heapq_heappop(heap):
    last = heap.pop()
    if heap:
        item = heap[0]
        heap[0] = last
        _heapq_up(heap, 0)
        return item
    return last
def _heapq_heapify(heap):
    for i in reversed(range(len(heap) // 2)):
        _heapq_up(heap, i)
def _heapq_heappushpop(heap, item):
    if heap and heap[0] < item:
        item, heap[0] = heap[0], item
        _heapq_up(heap, 0)
    return item
def _heapq_heapreplace(heap, item):
    top = heap[0]
    heap[0] = item
    _heapq_up(heap, 0)
    return top
def _heapq_nlargest(n, iterable, key=None):
    if key is None:
        return sorted(iterable, reverse=True)[:n]
    return sorted(iterable, key=key, reverse=True)[:n]
def _heapq_nsmallest(n, iterable, key=None):
    if key is None:
        return sorted(iterable)[:n]
    return sorted(iterable, key=key)[:n]
class heapq:
    heappush = _heapq_heappush
    heappop = _heapq_heappop
    heapify = _heapq_heapify
    heappushpop = _heapq_heappushpop
    heapreplace = _heapq_heapreplace
    nlargest = _heapq_nlargest
    nsmallest = _heapq_nsmallest
