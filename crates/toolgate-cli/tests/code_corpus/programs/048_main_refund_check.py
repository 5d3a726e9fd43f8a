# Before we tell the customer: were ORD-20533, ORD-20712 and ORD-99999 really refunded?
import asyncio


class OrderStateError(Exception):
    def __init__(self, order_id, status):
        super().__init__(f"{order_id} is {status}, not refunded")
        self.order_id = order_id
        self.status = status


async def check_refunded(customer_id, order_id):
    orders = (await list_orders(customer_id=customer_id))["orders"]
    try:
        order = next(o for o in orders if o["order_id"] == order_id)
    except StopIteration as e:
        raise OrderStateError(order_id, "missing") from e
    if order["status"] != "refunded":
        raise OrderStateError(order_id, order["status"])
    return order


async def main():
    results = {}
    for oid in ["ORD-20533", "ORD-20712", "ORD-99999"]:
        try:
            order = await check_refunded("CUS-1042", oid)
            results[oid] = f"refunded {order['total']} {order['currency']}"
        except OrderStateError as e:
            results[oid] = str(e)
    return results


result = asyncio.run(main())
result
