# Show me Piotr's (E112) calendar for 12/06/2024.
import asyncio


async def main():
    try:
        cal = await get_calendar(employee_id="E112", date="12/06/2024")
    except ValueError as e:
        print("retrying with an ISO date:", str(e).splitlines()[-1])
        cal = await get_calendar(employee_id="E112", date="2024-06-12")
    return [f"{e['start'][11:16]} {e['title']}" for e in cal["events"]]


result = asyncio.run(main())
result
