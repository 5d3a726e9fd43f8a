# List all Q2 expense lines over 200 USD for E101 and E104, largest first.
import asyncio


def big_items(reports, threshold):
    for report in reports:
        for item in report["items"]:
            if item["amount"] > threshold:
                yield report["employee_id"], item["merchant"], item["amount"]


async def main():
    reports = await asyncio.gather(
        get_expense_report(employee_id="E101", quarter="Q2"),
        get_expense_report(employee_id="E104", quarter="Q2"),
    )
    return sorted(big_items(reports, 200), key=lambda row: (-row[2], row[0]))


result = asyncio.run(main())
result
