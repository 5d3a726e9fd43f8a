# Fetch the catalog and all tickets, and tell me whether that took under a second.
import asyncio
import time


async def main():
    started = time.perf_counter()
    products, tickets = await asyncio.gather(list_products(), list_tickets(status="all"))
    elapsed = time.perf_counter() - started
    return {
        "products": len(products["products"]),
        "tickets": len(tickets["tickets"]),
        "fast": elapsed < 1.0,
    }


result = asyncio.run(main())
result
