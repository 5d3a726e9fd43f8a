# Get Omar's (E104) calendar for the next 7 days, starting today.
import asyncio
from datetime import datetime, timedelta


async def main():
    start = datetime.now().date()
    end = start + timedelta(days=7)
    cal = await get_calendar(employee_id="E104", date=start.isoformat(), days=(end - start).days)
    print(f"range: {(end - start).days} days, start before end: {start < end}")
    return {"days": cal["days"], "events": len(cal["events"])}


result = asyncio.run(main())
result
