"""Prometheus remote_write 1.0 messages (``prometheus.WriteRequest``), built at import from a
descriptor instead of a generated module: no protoc at build time and no generated code to
keep in step with the protobuf runtime. The fields are those of Prometheus'
``prompb/remote.proto`` and ``prompb/types.proto`` (remote_write 1.0 spec):

    message WriteRequest { repeated TimeSeries timeseries = 1; reserved 2;
                           repeated MetricMetadata metadata = 3; }
    message TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2;
                           repeated Exemplar exemplars = 3; repeated Histogram histograms = 4; }
    message Label        { string name = 1; string value = 2; }
    message Sample       { double value = 1; int64 timestamp = 2; }

Metadata and exemplars are not declared (a parser skips unknown fields); native histograms
are declared as opaque bytes, only to be counted and dropped. The classes live in a private
descriptor pool, so another ``prometheus`` package loaded in the process cannot clash.

``Status`` is ``google.rpc.Status`` (code, message; details as opaque bytes), the body of
OTLP/HTTP's error answers, built the same way so that the runtime needs no googleapis package.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

__all__ = ["Status", "WriteRequest"]

_F = descriptor_pb2.FieldDescriptorProto


def _message(file: Any, name: str, fields: list[tuple[str, int, int, int, str]]) -> None:
    msg = file.message_type.add(name=name)
    for fname, number, ftype, label, type_name in fields:
        field = msg.field.add(name=fname, number=number, type=ftype, label=label)
        if type_name:
            field.type_name = type_name


def _build() -> Any:
    file = descriptor_pb2.FileDescriptorProto(
        name="apm/prompb_remote_write.proto", package="prometheus", syntax="proto3"
    )
    opt, rep = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED
    _message(
        file,
        "Sample",
        [("value", 1, _F.TYPE_DOUBLE, opt, ""), ("timestamp", 2, _F.TYPE_INT64, opt, "")],
    )
    _message(
        file, "Label", [("name", 1, _F.TYPE_STRING, opt, ""), ("value", 2, _F.TYPE_STRING, opt, "")]
    )
    _message(
        file,
        "TimeSeries",
        [
            ("labels", 1, _F.TYPE_MESSAGE, rep, ".prometheus.Label"),
            ("samples", 2, _F.TYPE_MESSAGE, rep, ".prometheus.Sample"),
            ("histograms", 4, _F.TYPE_BYTES, rep, ""),
        ],
    )
    _message(
        file, "WriteRequest", [("timeseries", 1, _F.TYPE_MESSAGE, rep, ".prometheus.TimeSeries")]
    )
    return _class(file, "prometheus.WriteRequest")


def _class(file: Any, name: str) -> Any:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))


def _status() -> Any:
    file = descriptor_pb2.FileDescriptorProto(
        name="apm/google_rpc_status.proto", package="google.rpc", syntax="proto3"
    )
    opt, rep = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED
    _message(
        file,
        "Status",
        [
            ("code", 1, _F.TYPE_INT32, opt, ""),
            ("message", 2, _F.TYPE_STRING, opt, ""),
            ("details", 3, _F.TYPE_BYTES, rep, ""),
        ],
    )
    return _class(file, "google.rpc.Status")


WriteRequest: Any = _build()
Status: Any = _status()
