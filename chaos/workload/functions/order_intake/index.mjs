// order-intake: an API Gateway proxy handler (POST /orders) that stores the submitted order in the DynamoDB
// table named in TABLE_NAME, with the AWS SDK for JavaScript v3 that Lambda's Node.js runtime provides.
import { randomUUID } from "node:crypto";
import { DynamoDBClient, PutItemCommand } from "@aws-sdk/client-dynamodb";

const dynamodb = new DynamoDBClient({});

export const handler = async (event) => {
  const order = JSON.parse(event.body);
  const orderId = order.order_id ?? randomUUID();
  await dynamodb.send(
    new PutItemCommand({
      TableName: process.env.TABLE_NAME,
      Item: {
        order_id: { S: orderId },
        amount: { N: String(order.amount) },
        customer: { S: order.customer },
        received_at: { S: new Date().toISOString() },
      },
    }),
  );
  console.log(`stored order ${orderId} for ${order.customer}`);
  return {
    statusCode: 201,
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ order_id: orderId }),
  };
};
