# What do E104's Q2 expenses look like: total, mean, median and the largest single item?
import statistics

report = get_expense_report(employee_id="E104", quarter="Q2")
amounts = [item["amount"] for item in report["items"] if item["status"] != "rejected"]
{
    "count": len(amounts),
    "total": round(sum(amounts), 2),
    "mean": round(statistics.mean(amounts), 2),
    "median": statistics.median(amounts),
    "stdev": round(statistics.stdev(amounts), 2),
    "largest": max(amounts),
    "over_budget": sum(amounts) > report["budget"],
}
