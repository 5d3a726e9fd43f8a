# asyncio beyond this interpreter's own: gather(..., return_exceptions=True),
# create_task, Semaphore and Lock (`async with` on them runs its block).
async def _asyncio_settle(aw):
    try:
        return await aw
    except Exception as e:
        return e
async def _asyncio_gather_settled(*aws):
    return await asyncio.gather(*[_asyncio_settle(aw) for aw in aws])
def _asyncio_task(coro, *args, **kwargs):
    return coro
async def _asyncio_wait_for(aw, timeout=None):
    return await aw
class _asyncio_Semaphore:
    def __init__(self, value=1):
        self._value = value
    def locked(self):
        return False
    def release(self):
        pass
