# Open a high-priority ticket for CUS-1077 about the broken dough scraper, with our usual defaults.
import asyncio

DEFAULTS = {"type": "bug", "priority": "normal", "body": "Reported via the assistant."}


async def main():
    request = DEFAULTS | {"customer_id": "CUS-1077", "subject": "Dough scraper handle broke again", "priority": "high"}
    ticket = await create_ticket(**request)
    return {k: ticket[k] for k in ("ticket_id", "customer_id", "priority", "url")}


result = asyncio.run(main())
result
