# Task: "Get E104's expense report for the current quarter of 2024."
from datetime import datetime

now = datetime.now()
quarter = f"Q{(now.month - 1) // 3 + 1}"
print("quarter is one of Q1-Q4:", quarter in {"Q1", "Q2", "Q3", "Q4"})
report = get_expense_report(employee_id="E104", quarter=quarter, year=2024)
print(f"{len(report['items'])} items, budget {report['budget']}")
final_answer(len(report["items"]))
