//! Our EAPS PDUs as Wireshark sees them: every message type, written to a pcap, decoded by
//! `tshark`, whose fields (type, control VLAN, system MAC, sequence numbers, timers, state) must
//! be the ones we emitted and whose EDP checksum status must be "Good".

use spotagg_driver::wire::eaps::{emit_frame, EapsRepr, EapsState, EapsType};
use spotagg_driver::wire::MacAddr;
use std::process::Command;

/// `frames` written to a pcap and decoded by tshark: for each frame, the `fields` tshark gives.
fn tshark_fields(frames: &[Vec<u8>], fields: &[&str]) -> Vec<Vec<String>> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("frames.pcap");
    spotagg_sim::pcap::write_frames(&path, frames).unwrap();
    let mut cmd = Command::new("tshark");
    cmd.args(["-n", "-r"]).arg(&path).args(["-T", "fields", "-E", "separator=/t"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("tshark runs");
    assert!(out.status.success(), "tshark failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<Vec<String>> = text.lines().map(|l| l.split('\t').map(String::from).collect()).collect();
    assert_eq!(lines.len(), frames.len(), "tshark output:\n{text}");
    for line in text.lines() {
        eprintln!("{line}");
    }
    lines
}

/// The frames of `pdus` (`frame` of each) decoded by tshark must give, for each field that
/// `want` names for a PDU, the value beside it. Returns the frames.
fn assert_decoded<P>(
    pdus: &[P],
    frame: impl Fn(&P) -> Vec<u8>,
    want: fn(&P) -> Vec<(&'static str, String)>,
) -> Vec<Vec<u8>> {
    let frames: Vec<Vec<u8>> = pdus.iter().map(frame).collect();
    let fields: Vec<&str> = want(&pdus[0]).iter().map(|&(f, _)| f).collect();
    for (got, pdu) in tshark_fields(&frames, &fields).iter().zip(pdus) {
        let want: Vec<String> = want(pdu).into_iter().map(|(_, v)| v).collect();
        assert_eq!(*got, want, "fields {fields:?}");
    }
    frames
}

#[test]
fn tshark_decodes_our_pdus() {
    if !spotagg_testkit::require_tool(spotagg_testkit::Tool::Tshark) {
        return;
    }
    let pdus: Vec<EapsRepr> = [
        (EapsType::Health, 1000, EapsState::Complete, 1),
        (EapsType::RingUpFlushFdb, 1001, EapsState::Complete, 2),
        (EapsType::RingDownFlushFdb, 4094, EapsState::Failed, 3),
        (EapsType::LinkDown, 7, EapsState::LinksDown, 0),
        (EapsType::Health, 1000, EapsState::Failed, 65535),
    ]
    .iter()
    .enumerate()
    .map(|(i, &(eaps_type, control_vlan, state, hello_seq))| EapsRepr {
        edp_sequence: 0x1000 + i as u16,
        eaps_type,
        control_vlan,
        system_mac: MacAddr([0x02, 0x5a, 0, 0, i as u8, 0x10 + i as u8]),
        hello_timer: 1 + i as u16,
        fail_timer: 3 + 2 * i as u16,
        state,
        hello_seq,
    })
    .collect();
    let frames = assert_decoded(&pdus, |r| emit_frame(r, r.system_mac, 7), eaps_fields);

    // A corrupted checksum is reported bad (status 0): the check above can fail.
    let mut bad = frames[0].clone();
    bad[18 + 13] ^= 0x01;
    assert_eq!(tshark_fields(&[bad], &["edp.checksum.status"]), [["0"]]);
}

/// Our shared-link segment health PDUs (driver::wire::esl) as Wireshark's ESL TLV: control
/// VLAN, system MAC, state, role, link ID and failed link ID as emitted, checksum Good.
#[test]
fn tshark_decodes_our_esl_pdus() {
    use spotagg_driver::wire::esl::{emit_frame, EslRepr, EslRole, EslState};
    if !spotagg_testkit::require_tool(spotagg_testkit::Tool::Tshark) {
        return;
    }
    let pdus: Vec<EslRepr> = [
        (10, EslState::Ready, EslRole::Controller, 34, 0, 0),
        (20, EslState::Blocking, EslRole::Controller, 34, 34, 12),
        (4094, EslState::PreForwarding, EslRole::Partner, 65535, 0, 0xfffe),
        (7, EslState::Ready, EslRole::Partner, 1, 1, 0x0100),
    ]
    .iter()
    .enumerate()
    .map(|(i, &(control_vlan, state, role, link_id, failed_link, rb_id))| EslRepr {
        edp_sequence: 0x2000 + i as u16,
        control_vlan,
        system_mac: MacAddr([0x02, 0x5a, 0, 1, i as u8, 0x20 + i as u8]),
        state,
        role,
        link_id,
        failed_link,
        rb_id,
    })
    .collect();
    assert_decoded(&pdus, |r| emit_frame(r, r.system_mac, 7), esl_fields);
}

/// The tshark fields of an EAPS PDU and the values it must show.
fn eaps_fields(r: &EapsRepr) -> Vec<(&'static str, String)> {
    vec![
        ("vlan.id", r.control_vlan.to_string()),
        ("llc.extreme_pid", "0x00bb".to_string()),
        ("edp.seqno", r.edp_sequence.to_string()),
        ("edp.midmac", r.system_mac.to_string()),
        ("edp.checksum.status", "1".to_string()), // PROTO_CHECKSUM_E_GOOD (0 bad, 2 unverified)
        // The EAPS TLV, then the null TLV that ends the list (docs/eaps.md §1).
        ("edp.tlv.type", "11,0".to_string()),
        ("edp.eaps.type", u8::from(r.eaps_type).to_string()),
        ("edp.eaps.vlanid", r.control_vlan.to_string()),
        ("edp.eaps.sysmac", r.system_mac.to_string()),
        ("edp.eaps.hello", r.hello_timer.to_string()),
        ("edp.eaps.fail", r.fail_timer.to_string()),
        ("edp.eaps.state", u8::from(r.state).to_string()),
        ("edp.eaps.helloseq", r.hello_seq.to_string()),
    ]
}

/// The tshark fields of an ESL PDU and the values it must show.
fn esl_fields(r: &spotagg_driver::wire::esl::EslRepr) -> Vec<(&'static str, String)> {
    vec![
        ("vlan.id", r.control_vlan.to_string()),
        ("edp.seqno", r.edp_sequence.to_string()),
        ("edp.checksum.status", "1".to_string()),
        ("edp.tlv.type", "14".to_string()),
        ("edp.esl.type", "1".to_string()),
        ("edp.esl.vlanid", r.control_vlan.to_string()),
        ("edp.esl.sysmac", r.system_mac.to_string()),
        ("edp.esl.state", u8::from(r.state).to_string()),
        ("edp.esl.role", u8::from(r.role).to_string()),
        ("edp.esl.linkid1", r.link_id.to_string()),
        ("edp.esl.failed1", r.failed_link.to_string()),
        // The segment RB ID (docs/eaps.md §11): Wireshark has no name for it, and shows the
        // two bytes as its Reserved4.
        ("edp.esl.reserved4", format!("{:04x}", r.rb_id)),
        ("edp.esl.numlinks", "0".to_string()),
    ]
}
