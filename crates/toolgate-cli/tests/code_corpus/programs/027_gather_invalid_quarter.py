# Add up the Q2 and Q3 expense reports of E104 and the Q2 report of E112.
import asyncio

try:
    reports = await asyncio.gather(
        get_expense_report("E104", "Q2"),
        get_expense_report("E112", "Q2"),
        get_expense_report("E104", "q3"),
    )
except ValueError as e:
    print("one request was rejected:", e)
    reports = await asyncio.gather(
        get_expense_report("E104", "Q2"),
        get_expense_report("E112", "Q2"),
    )
print(round(sum(sum(i["amount"] for i in r["items"]) for r in reports), 2))
