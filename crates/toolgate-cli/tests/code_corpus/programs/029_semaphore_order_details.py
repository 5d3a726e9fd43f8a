# Fetch every order of CUS-1042 in detail, at most 2 at a time, and count the units.
import asyncio

sem = asyncio.Semaphore(2)


async def fetch(order_id):
    async with sem:
        return await get_order(order_id)


orders = (await list_orders("CUS-1042"))["orders"]
details = await asyncio.gather(*[fetch(o["order_id"]) for o in orders])
units = sum(i["quantity"] for d in details for i in d["items"])
print(f"{len(details)} orders, {units} units in total")
