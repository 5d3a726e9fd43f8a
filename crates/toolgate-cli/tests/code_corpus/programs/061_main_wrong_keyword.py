# List the open billing tickets.
import asyncio


async def main():
    resp = await list_tickets(status="open", ticket_type="billing")
    return [t["id"] for t in resp["tickets"] if t["type"] == "billing"]


result = asyncio.run(main())
result
