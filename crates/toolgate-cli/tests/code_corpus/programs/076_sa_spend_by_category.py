# Task: "How did E112 spend money in Q2, by category?"
from collections import Counter

report = get_expense_report(employee_id="E112", quarter="Q2")
spend = Counter()
for item in report["items"]:
    if item["status"] != "rejected":
        spend[item["category"]] += item["amount"]
print(spend.most_common())
top_category, top_amount = spend.most_common(1)[0]
final_answer(f"Most money went to {top_category}: {top_amount:.2f} {report['currency']}")
