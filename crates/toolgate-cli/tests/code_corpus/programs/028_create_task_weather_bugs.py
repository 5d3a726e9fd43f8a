# Get today's Hamburg weather and the open bug tickets at the same time, then summarise.
import asyncio

weather_task = asyncio.create_task(get_weather("Hamburg", "metric", 1))
tickets_task = asyncio.create_task(list_tickets("open", "bug"))
weather = await weather_task
tickets = await tickets_task
bugs = [t for t in tickets["tickets"] if t["type"] == "bug" and t["status"] == "open"]
print(f"Hamburg: {weather['current']['condition']}, {len(bugs)} open bug tickets")
print(", ".join(t["id"] for t in bugs))
