# What's the longest event on Omar's calendar for 2024-06-12, and how many minutes are booked in all?
import asyncio
from dataclasses import dataclass, field
from datetime import datetime


@dataclass(order=True)
class Event:
    minutes: int
    title: str = field(compare=False)


async def main():
    cal = await get_calendar(employee_id="E104", date="2024-06-12")
    events = []
    for e in cal["events"]:
        delta = datetime.fromisoformat(e["end"]) - datetime.fromisoformat(e["start"])
        events.append(Event(int(delta.total_seconds() // 60), e["title"]))
    longest = max(events)
    return {"longest": longest.title, "minutes": longest.minutes, "total": sum(e.minutes for e in events)}


result = asyncio.run(main())
result
