# Pull the Q2 expense reports of the whole engineering team (at most 3 requests at a time) and sum what is still pending.
import asyncio


async def main():
    team = (await list_team_members(department="engineering"))["members"]
    limit = asyncio.Semaphore(3)

    async def pending_for(member):
        async with limit:
            report = await get_expense_report(employee_id=member["id"], quarter="Q2")
        pending = sum(i["amount"] for i in report["items"] if i["status"] == "pending")
        return member["name"], round(pending, 2)

    pairs = await asyncio.gather(*(pending_for(m) for m in team))
    return dict(pairs)


result = asyncio.run(main())
result
