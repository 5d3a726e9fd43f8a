# What were the three biggest expenses E107 filed in Q2, and were they approved?
import heapq
from operator import itemgetter

items = get_expense_report(employee_id="E107", quarter="Q2")["items"]
biggest = heapq.nlargest(3, items, key=itemgetter("amount"))
[(i["merchant"], i["amount"], i["status"] == "approved") for i in biggest]
