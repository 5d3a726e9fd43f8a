# Send Sofia Rossi (CUS-1103) a summary of her open requests.
import asyncio


async def main():
    customer, tickets = await asyncio.gather(
        crm.get_customer(id="CUS-1103"),
        list_tickets(status="all", customer_id="CUS-1103"),
    )
    mine = [t for t in tickets["tickets"] if t["customer_id"] == "CUS-1103" and t["status"] != "closed"]
    lines = "\n".join(f"- {t['id']}: {t['subject']} ({t['status']})" for t in mine)
    return await send_email(
        to=customer["email"],
        subject="Your open requests",
        body=f"Hello,\n\nhere is where your requests stand:\n{lines}\n",
    )


result = asyncio.run(main())
result
