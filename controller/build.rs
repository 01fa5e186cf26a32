//! The gRPC services of docs/controller.md, server and client, from their description here
//! (tonic-build's manual builder: no protoc). The messages are `src/proto.rs`, prost structs
//! numbered as SwitchML's `protos/switchml.proto`.

use tonic_build::manual::{Builder, Method, Service};

fn method(name: &str, route: &str, input: &str, output: &str) -> Method {
    Method::builder()
        .name(name)
        .route_name(route)
        .input_type(format!("crate::proto::{input}"))
        .output_type(format!("crate::proto::{output}"))
        .codec_path("tonic_prost::ProstCodec")
        .build()
}

fn main() {
    let session = Service::builder()
        .name("Session")
        .package("switchml_proto")
        .method(method("rdma_session", "RdmaSession", "RdmaSessionRequest", "RdmaSessionResponse"))
        .method(method("udp_session", "UdpSession", "UdpSessionRequest", "UdpSessionResponse"))
        .build();
    let sync = Service::builder()
        .name("Sync")
        .package("switchml_proto")
        .method(method("barrier", "Barrier", "BarrierRequest", "BarrierResponse"))
        .method(method("broadcast", "Broadcast", "BroadcastRequest", "BroadcastResponse"))
        .build();
    let control = Service::builder()
        .name("Control")
        .package("spotagg_proto")
        .method(method("end_session", "EndSession", "EndSessionRequest", "EndSessionResponse"))
        .build();
    Builder::new().compile(&[session, sync, control]);
}
