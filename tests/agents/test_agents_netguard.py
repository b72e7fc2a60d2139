"""Where a model endpoint may connect (``agents.netguard``): the class of every kind of non-global address, names and
numeric forms resolved as the connection resolves them (locally: literals and ``localhost``, never the network), and
the connect-time check that catches a name resolving to a public address when saved and to loopback when used
(DNS rebinding) before anything is sent."""

import socket

import httpx2
import pytest

from agents import netguard
from agents.netguard import AddressRefused, GuardedTransport, address_kind, host_refusal
from tests.support.loopback import loopback_server

NON_GLOBAL = [
    ("127.0.0.1", netguard.LOOPBACK),
    ("127.255.0.9", netguard.LOOPBACK),
    ("::1", netguard.LOOPBACK),
    ("::ffff:127.0.0.1", netguard.LOOPBACK),
    ("2002:7f00:1::", netguard.LOOPBACK),  # 6to4 carrying 127.0.0.1
    ("2002:a9fe:a9fe::", netguard.LINK_LOCAL),  # 6to4 carrying 169.254.169.254
    ("2002:a00:1::", netguard.PRIVATE),  # 6to4 carrying 10.0.0.1
    ("64:ff9b::7f00:1", netguard.LOOPBACK),  # NAT64 carrying 127.0.0.1
    ("10.1.2.3", netguard.PRIVATE),
    ("172.16.0.1", netguard.PRIVATE),
    ("172.31.255.254", netguard.PRIVATE),
    ("192.168.1.1", netguard.PRIVATE),
    ("::ffff:192.168.1.1", netguard.PRIVATE),
    ("fc00::1", netguard.PRIVATE),
    ("fd12:3456::1", netguard.PRIVATE),
    ("169.254.169.254", netguard.LINK_LOCAL),
    ("fe80::1", netguard.LINK_LOCAL),
    ("0.0.0.0", netguard.UNSPECIFIED),
    ("::", netguard.UNSPECIFIED),
    ("224.0.0.1", netguard.MULTICAST),
    ("ff02::1", netguard.MULTICAST),
    ("240.0.0.1", netguard.RESERVED),
    ("255.255.255.255", netguard.RESERVED),
    ("100.64.0.1", netguard.NON_GLOBAL),  # shared address space (carrier-grade NAT)
    ("192.0.2.10", netguard.NON_GLOBAL),  # documentation
    ("198.18.0.1", netguard.NON_GLOBAL),  # benchmarking
]


@pytest.mark.parametrize(("address", "kind"), NON_GLOBAL)
def test_every_kind_of_non_global_address_is_named_by_its_class(address, kind):
    assert address_kind(address) == kind


@pytest.mark.parametrize("address", ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "172.32.0.1", "192.169.0.1"])
def test_global_addresses_have_no_class(address):
    assert address_kind(address) is None


@pytest.mark.parametrize(
    ("host", "kind"),
    [
        ("127.0.0.1", netguard.LOOPBACK),
        ("localhost", netguard.LOOPBACK),  # /etc/hosts: no query leaves the machine
        ("2130706433", netguard.LOOPBACK),  # decimal
        ("0177.0.0.1", netguard.LOOPBACK),  # octal
        ("0x7f.0.0.1", netguard.LOOPBACK),  # hexadecimal
        ("127.1", netguard.LOOPBACK),  # short form
        ("::ffff:127.0.0.1", netguard.LOOPBACK),
        ("10.0.0.8", netguard.PRIVATE),
        ("0.0.0.0", netguard.UNSPECIFIED),
        ("fe80::1", netguard.LINK_LOCAL),
    ],
)
def test_a_host_is_refused_by_the_class_of_what_it_resolves_to(host, kind):
    refusal = host_refusal(host, 80)
    assert f"is or resolves to {kind}" in refusal
    assert "127.0.0.1" not in refusal.replace(f"the host {host} ", "")  # the class is named, never the address


def rebinding_resolver(first: str, then: str):
    """A name's answers as a rebinding DNS server gives them: ``first`` once (when the endpoint is saved), then
    ``then`` (when the run connects). Nothing is ever sent to ``first``."""
    answers = [first]

    def resolve(host, port, type=0, **_):
        address = answers.pop() if answers else then
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        return [(family, socket.SOCK_STREAM, 6, "", (address, port))]

    return resolve


def test_a_name_rebound_to_loopback_after_it_was_saved_is_refused_when_connecting():
    with loopback_server() as listener:
        port = int(listener.url.rsplit(":", 1)[1])
        resolve = rebinding_resolver("8.8.8.8", "127.0.0.1")  # public when saved (never connected to)
        assert host_refusal("model.example", port, resolve) is None
        transport = GuardedTransport(allow_private=False, max_reply_bytes=1024, resolve=resolve)
        with httpx2.Client(transport=transport) as client, pytest.raises(httpx2.ConnectError) as raised:
            client.post(f"http://model.example:{port}/v1/chat/completions", json={"model": "m"})
    refused = raised.value.__cause__
    assert isinstance(refused, AddressRefused)
    assert refused.kind == netguard.LOOPBACK
    assert listener.requests == []


def test_with_private_addresses_allowed_the_transport_connects_as_usual():
    with loopback_server() as listener:
        transport = GuardedTransport(allow_private=True, max_reply_bytes=1024)
        with httpx2.Client(transport=transport) as client:
            assert client.get(f"{listener.url.replace('127.0.0.1', 'localhost')}/ping").status_code == 204
    assert [request.path for request in listener.requests] == ["/ping"]
