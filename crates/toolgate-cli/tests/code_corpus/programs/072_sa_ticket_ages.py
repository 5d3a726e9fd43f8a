# Task: "What is the median age of our open tickets in hours, and which is the oldest?"
import statistics

tickets = list_tickets(status="open")["tickets"]
open_tickets = [t for t in tickets if t["status"] == "open"]
ages = [t["age_hours"] for t in open_tickets]
print("ages:", ages)
oldest = max(open_tickets, key=lambda t: t["age_hours"])
print("oldest:", oldest["id"], oldest["subject"])
final_answer({"median_hours": statistics.median(ages), "oldest": oldest["id"]})
