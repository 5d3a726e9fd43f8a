# Task: "What percentage of her Q2 budget has E107 spent, counting approved items only?"
report = get_expense_report(employee_id="E107", quarter="Q2")
approved = [item["amount"] for item in report["items"] if item["status"] == "approved"]
print(f"Approved items: {approved}")
spent = sum(approved)
percentage = spent / report["budget"] * 100
print(f"Spent {spent:.2f} of {report['budget']} {report['currency']}")
final_answer(round(percentage, 1))
