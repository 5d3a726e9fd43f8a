# Check three things at once: customer CUS-1042, the parcel JD0146000038 and the orders of customer "1077".
import asyncio


async def main():
    results = await asyncio.gather(
        crm.get_customer(id="CUS-1042"),
        track_shipment(tracking_number="JD0146000038"),
        list_orders(customer_id="1077"),
        return_exceptions=True,
    )
    summary = []
    for name, r in zip(["customer", "tracking", "orders"], results):
        if isinstance(r, BaseException):
            summary.append(f"{name}: {type(r).__name__}")
        else:
            summary.append(f"{name}: ok")
    return summary


result = asyncio.run(main())
result
