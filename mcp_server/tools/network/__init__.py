"""``get_network_state``: the function's VPC attachment, security groups, subnets, route tables, NAT gateways,
VPC endpoints, prefix lists and network ACLs, and whether they let it reach AWS over HTTPS.

:mod:`.reads` reads the VPC, :mod:`.mapping` shapes EC2's answers as contract models, :mod:`.verdicts`
judges HTTPS egress per destination on the pure rules of :mod:`.rules`.
"""

from __future__ import annotations

from mcp_server.contract.network import GetNetworkStateArgs, NetworkStateResponse
from mcp_server.tools.context import ToolContext
from mcp_server.tools.lambda_config import function_configuration
from mcp_server.tools.network.mapping import (
    prefix_list_models,
    prefix_list_names,
    reachable_endpoints,
    security_group,
)
from mcp_server.tools.network.reads import Ec2Reads, read_vpc
from mcp_server.tools.network.verdicts import (
    SERVICES,
    destinations,
    egress_note,
    egress_verdict,
    service_list_name,
)

NOT_IN_VPC_NOTE = (
    "the function is not attached to a VPC: it has Lambda's default internet egress and no security "
    "groups, routes or network ACLs apply"
)


def network_state(ctx: ToolContext, args: GetNetworkStateArgs) -> NetworkStateResponse:
    """The function's network attachment and, per destination, whether HTTPS egress works and why."""
    config = function_configuration(ctx)
    vpc_config = config.get("VpcConfig") or {}
    subnet_ids: list[str] = vpc_config.get("SubnetIds") or []
    if not subnet_ids:
        return NetworkStateResponse(
            function_name=config["FunctionName"], in_vpc=False, note=NOT_IN_VPC_NOTE, gaps=ctx.reads.gaps
        )
    reads, region = Ec2Reads(ctx), ctx.target.region
    raw_groups, raw_subnets, service_lists = ctx.reads.many(
        [
            reads.groups(vpc_config.get("SecurityGroupIds") or []),
            reads.subnets(subnet_ids),
            reads.service_lists([service_list_name(region, s) for s in SERVICES]),
        ]
    )
    groups = None if raw_groups is None else [security_group(g) for g in raw_groups]
    names = None if service_lists is None else prefix_list_names(service_lists)
    referenced = [
        *(names or {}),
        *(pl for g in groups or [] for rule in g.egress for pl in rule.prefix_list_ids),
    ]
    view = read_vpc(reads, raw_subnets, referenced)
    verdicts = [egress_verdict(d, groups, view) for d in destinations(region, names, view.prefix_lists)]
    shown = (
        verdicts
        if args.detail
        else [v.model_copy(update={"reasons": []}) if v.allowed else v for v in verdicts]
    )
    targets = {r.target for s in view.subnets.values() if s.route_table for r in s.route_table.routes}
    endpoints = reachable_endpoints((view.endpoints or {}).values(), view.subnets.values())
    return NetworkStateResponse(
        function_name=config["FunctionName"],
        in_vpc=True,
        # EC2 names the VPC authoritatively (the sandbox emulator puts a placeholder in VpcConfig.VpcId).
        vpc_id=raw_subnets[0]["VpcId"] if raw_subnets else vpc_config.get("VpcId"),
        security_groups=groups or [],
        subnets=list(view.subnets.values()),
        nat_gateways=[n for n in (view.nat_gateways or {}).values() if n.nat_gateway_id in targets],
        vpc_endpoints=endpoints,
        prefix_lists=prefix_list_models(view.prefix_lists, names or {}) if args.detail else [],
        egress=shown,
        https_egress_allowed=verdicts[0].allowed,
        note=egress_note(verdicts, endpoints),
        gaps=ctx.reads.gaps,
    )
