#!/usr/bin/env python3
"""Writes the bundled topology files (topologies/*.json) from the figures below.

Run from anywhere: python3 topologies/make_topologies.py. The JSON files are committed; this
script documents where each figure comes from and keeps the larger machines consistent.
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

# Order-of-magnitude one-way latencies (us), the same for every machine.
LAT_PCIE = 1.0
LAT_NVLINK = 0.5
LAT_SOCKET = 0.3
LAT_NETWORK = 3.0


class Machine:
    def __init__(self, name, description, host_memcpy_gbps=0.0, pcie_both_ways_gbps=0.0):
        self.doc = {
            "name": name,
            "description": description,
            "host_memcpy_gbps": host_memcpy_gbps,
            "pcie_both_ways_gbps": pcie_both_ways_gbps,
            "nodes": [],
            "links": [],
        }

    def node(self, name, kind, server=0, numa=None, memory_gbps=0.0, cores=0, pci_bus_id=""):
        self.doc["nodes"].append({
            "name": name, "kind": kind, "server": server, "numa": numa,
            "memory_gbps": memory_gbps, "cores": cores, "pci_bus_id": pci_bus_id,
        })
        return name

    def link(self, a, b, kind, gbps, latency_us, gbps_ba=None):
        self.doc["links"].append({
            "a": a, "b": b, "kind": kind, "gbps_ab": gbps,
            "gbps_ba": gbps if gbps_ba is None else gbps_ba, "latency_us": latency_us,
        })

    def write(self):
        path = os.path.join(HERE, self.doc["name"] + ".json")
        with open(path, "w") as f:
            json.dump(self.doc, f, indent=2)
            f.write("\n")


def h200x2():
    m = Machine(
        "h200x2",
        "A 2x H200 SXM server, the one braid's GPU figures were measured on: one NUMA node with 32 "
        "vCPUs. NVLink NV18 = 18 links x 26.6 GB/s per direction between the GPUs; PCIe Gen5 x16 per "
        "GPU, pinned D2H/H2D measured 55 GB/s each direction, 38 GB/s per GPU per direction when both "
        "GPUs copy both ways; host memory 150 GB/s is the host-side cap measured there. "
        "host_memcpy_gbps 12 per core is an estimate, not a measurement. "
        "GPU memory 4800 GB/s is the H200 datasheet figure.",
        host_memcpy_gbps=12.0, pcie_both_ways_gbps=38.0)
    numa = m.node("numa0", "numa", memory_gbps=150.0, cores=32)
    gpus = [m.node(f"gpu{i}", "gpu", numa=numa, memory_gbps=4800.0) for i in range(2)]
    for g in gpus:
        m.link(g, numa, "pcie", 55.0, LAT_PCIE)
    m.link(gpus[0], gpus[1], "nvlink", round(18 * 26.6, 6), LAT_NVLINK)
    m.write()


def h200_nvswitch(name, description, gpus, numa_count, cores_per_numa, nics=0):
    """An H200 SXM machine whose GPUs all reach one NVSwitch fabric with NV18 (18 links x 26.6
    GB/s per direction), each GPU on PCIe Gen5 x16 to its socket (55 GB/s each way measured for
    one GPU alone, 50 + 50 both ways at once). A socket's host side (root complex and DRAM) is
    one shared cap: 170 GB/s through it in all, measured with four GPUs copying both ways at
    once (21.4 + 21.4 GB/s each) on the 4x H200 server."""
    m = Machine(name, description, host_memcpy_gbps=12.0, pcie_both_ways_gbps=50.0)
    numas = [m.node(f"numa{s}", "numa", memory_gbps=170.0, cores=cores_per_numa) for s in range(numa_count)]
    nvswitch = m.node("nvswitch0", "nvswitch")
    per_numa = gpus // numa_count
    for i in range(gpus):
        g = m.node(f"gpu{i}", "gpu", numa=numas[i // per_numa], memory_gbps=4800.0)
        m.link(g, numas[i // per_numa], "pcie", 55.0, LAT_PCIE)
        m.link(g, nvswitch, "nvlink", round(18 * 26.6, 6), LAT_NVLINK)
    for i in range(nics):
        nic = m.node(f"nic{i}", "nic", numa=numas[i // (nics // numa_count)])
        m.link(nic, numas[i // (nics // numa_count)], "pcie", 50.0, LAT_PCIE)
    for s in range(1, numa_count):
        m.link(numas[s - 1], numas[s], "inter_socket", 100.0, LAT_SOCKET)
    m.write()


def h200x4():
    h200_nvswitch(
        "h200x4",
        "A 4x H200 SXM server, the one braid's four-GPU figures were measured on: every GPU on an "
        "NVSwitch with NV18 (18 links x 26.6 GB/s per direction), one NUMA node with 64 vCPUs. PCIe Gen5 x16 per GPU: 55 GB/s each way "
        "for one GPU alone, 50 + 50 both ways at once; with all four GPUs copying both ways, 21.4 + "
        "21.4 GB/s each, about 170 GB/s through the host in all: numa0's memory_gbps is that "
        "aggregate cap (measured 28 Nov, bench/calibration/README.md). host_memcpy_gbps 12 "
        "per core is an estimate. GPU memory 4800 GB/s is the H200 datasheet figure.",
        gpus=4, numa_count=1, cores_per_numa=64)


def h200x8():
    h200_nvswitch(
        "h200x8",
        "An HGX H200 x8 (a model, not a measured machine): 8x H200 SXM on NVSwitch "
        "with NV18 each (18 x 26.6 GB/s per direction), PCIe Gen5 x16 per GPU (55 GB/s each way "
        "alone, 50 + 50 both ways, as measured on 2x and 4x H200), 2 sockets with 4 GPUs and 4 "
        "NICs each. Each socket's host side is assumed to cap at the 170 GB/s in all measured "
        "through the one-socket 4x H200 server with four GPUs busy; the sockets joined by ~100 GB/s "
        "per direction (estimate). 8 NICs of 400 Gb/s (50 GB/s) as HGX servers carry. 56 cores "
        "per socket is typical of such servers, an assumption. GPU memory 4800 GB/s (datasheet).",
        gpus=8, numa_count=2, cores_per_numa=56, nics=8)


def hylink_3090x4():
    m = Machine(
        "hylink-3090x4",
        "HyLink's PCIe CCL testbed (HyLink paper, section 5): 4x RTX 3090 without NVLink or P2P, "
        "2 sockets of AMD EPYC 7642 (48 cores each, DDR4-3200 8 channels ~205 GB/s per socket), "
        "2 GPUs per socket directly on the root complex via PCIe Gen4 x8 (15.75 GB/s theoretical, "
        "~13 GB/s per direction assumed achievable), inter-socket (Infinity Fabric) ~50 GB/s per "
        "direction (estimate). GPU memory 936 GB/s is the RTX 3090 datasheet figure.")
    numas = [m.node(f"numa{s}", "numa", memory_gbps=205.0, cores=48) for s in range(2)]
    for i in range(4):
        g = m.node(f"gpu{i}", "gpu", numa=numas[i // 2], memory_gbps=936.0)
        m.link(g, numas[i // 2], "pcie", 13.0, LAT_PCIE)
    m.link(numas[0], numas[1], "inter_socket", 50.0, LAT_SOCKET)
    m.write()


def flexlink_h800x8():
    m = Machine(
        "flexlink-h800x8",
        "FlexLink's 8x H800 server (FlexLink paper, Table 1): NVLink 400 GB/s bidirectional per GPU "
        "(200 per direction) through the NVSwitch fabric, modelled as one nvswitch node; PCIe Gen5 "
        "x16 per GPU (~53 GB/s per direction achievable of 63 theoretical); 8 RDMA NICs of 400 Gb/s "
        "(50 GB/s); 4 PCIe switches each holding 2 GPUs + 2 NICs, 2 switches per socket with a "
        "Gen5 x16 uplink (~53 GB/s); 2 sockets joined by ~100 GB/s per direction (estimate). Cores "
        "(48 per socket) and host memory (~300 GB/s per socket, DDR5 8 channels) are typical "
        "figures for such servers, not from the paper. GPU memory 3350 GB/s (H800 SXM datasheet).")
    numas = [m.node(f"numa{s}", "numa", memory_gbps=300.0, cores=48) for s in range(2)]
    nvswitch = m.node("nvswitch0", "nvswitch")
    switches = []
    for k in range(4):
        sw = m.node(f"sw{k}", "pcie_switch", numa=numas[k // 2])
        switches.append(sw)
        m.link(sw, numas[k // 2], "pcie", 53.0, LAT_PCIE)
    for i in range(8):
        sw = switches[i // 2]
        g = m.node(f"gpu{i}", "gpu", numa=numas[i // 4], memory_gbps=3350.0)
        m.link(g, sw, "pcie", 53.0, LAT_PCIE)
        m.link(g, nvswitch, "nvlink", 200.0, LAT_NVLINK)
    for i in range(8):
        nic = m.node(f"nic{i}", "nic", numa=numas[i // 4])
        m.link(nic, switches[i // 2], "pcie", 50.0, LAT_PCIE)
    m.link(numas[0], numas[1], "inter_socket", 100.0, LAT_SOCKET)
    m.write()


def nimble_h100_2x4():
    m = Machine(
        "nimble-h100-2x4",
        "NIMBLE's cluster (NIMBLE paper, evaluation): 2 servers x 4 H100, NVLink full mesh with "
        "120 GB/s per GPU pair per direction (direct gpu-gpu links), 4 NDR400 InfiniBand NICs per "
        "server (50 GB/s), one rail per GPU: each NIC on its GPU's PCIe switch (rail-matched). "
        "2 sockets per server, 2 GPU switches per socket. PCIe Gen5 x16 ~53 GB/s per direction, "
        "inter-socket ~100 GB/s, 48 cores and ~300 GB/s memory per socket: typical figures, "
        "estimates. A network node joins all NICs. GPU memory 3350 GB/s (H100 SXM datasheet).")
    network = m.node("network0", "network")
    for s in range(2):
        numas = [m.node(f"numa{2 * s + k}", "numa", server=s, memory_gbps=300.0, cores=48)
                 for k in range(2)]
        m.link(numas[0], numas[1], "inter_socket", 100.0, LAT_SOCKET)
        gpus = []
        for i in range(4):
            idx = 4 * s + i
            numa = numas[i // 2]
            sw = m.node(f"sw{idx}", "pcie_switch", server=s, numa=numa)
            m.link(sw, numa, "pcie", 53.0, LAT_PCIE)
            g = m.node(f"gpu{idx}", "gpu", server=s, numa=numa, memory_gbps=3350.0)
            m.link(g, sw, "pcie", 53.0, LAT_PCIE)
            nic = m.node(f"nic{idx}", "nic", server=s, numa=numa)
            m.link(nic, sw, "pcie", 50.0, LAT_PCIE)
            m.link(nic, network, "network", 50.0, LAT_NETWORK)
            gpus.append(g)
        for i in range(4):
            for j in range(i + 1, 4):
                m.link(gpus[i], gpus[j], "nvlink", 120.0, LAT_NVLINK)
    m.write()


def fuselink_2x8():
    m = Machine(
        "fuselink-2x8",
        "FuseLink's testbed (FuseLink slides, evaluation): 2 servers x 8 Hopper GPUs with "
        "NVSwitch, up to 200 GB/s per GPU per direction (one nvswitch node per server), 8 "
        "ConnectX-7 NICs of 50 GB/s per server, each NIC sharing a PCIe switch with one GPU; "
        "2 sockets per server with 4 switches each. PCIe Gen5 x16 ~53 GB/s per direction, "
        "inter-socket ~100 GB/s, 48 cores and ~300 GB/s memory per socket: typical figures, "
        "estimates. A network node joins all NICs. GPU memory 3350 GB/s (H100 SXM datasheet).")
    network = m.node("network0", "network")
    for s in range(2):
        numas = [m.node(f"numa{2 * s + k}", "numa", server=s, memory_gbps=300.0, cores=48)
                 for k in range(2)]
        m.link(numas[0], numas[1], "inter_socket", 100.0, LAT_SOCKET)
        nvswitch = m.node(f"nvswitch{s}", "nvswitch", server=s)
        for i in range(8):
            idx = 8 * s + i
            numa = numas[i // 4]
            sw = m.node(f"sw{idx}", "pcie_switch", server=s, numa=numa)
            m.link(sw, numa, "pcie", 53.0, LAT_PCIE)
            g = m.node(f"gpu{idx}", "gpu", server=s, numa=numa, memory_gbps=3350.0)
            m.link(g, sw, "pcie", 53.0, LAT_PCIE)
            m.link(g, nvswitch, "nvlink", 200.0, LAT_NVLINK)
            nic = m.node(f"nic{idx}", "nic", server=s, numa=numa)
            m.link(nic, sw, "pcie", 50.0, LAT_PCIE)
            m.link(nic, network, "network", 50.0, LAT_NETWORK)
    m.write()


def pcie_8gpu_2socket():
    m = Machine(
        "pcie-8gpu-2socket",
        "A generic PCIe-only server (no NVLink): 8 GPUs, 2 sockets, 4 GPUs per socket directly on "
        "the root complex via PCIe Gen4 x16 (~24 GB/s per direction achievable of 31.5 "
        "theoretical), inter-socket ~60 GB/s per direction. Cores (32 per socket), host memory "
        "(~200 GB/s per socket) and GPU memory (0: unknown) are assumptions, not measurements.")
    numas = [m.node(f"numa{s}", "numa", memory_gbps=200.0, cores=32) for s in range(2)]
    for i in range(8):
        g = m.node(f"gpu{i}", "gpu", numa=numas[i // 4])
        m.link(g, numas[i // 4], "pcie", 24.0, LAT_PCIE)
    m.link(numas[0], numas[1], "inter_socket", 60.0, LAT_SOCKET)
    m.write()


if __name__ == "__main__":
    h200x2()
    h200x4()
    h200x8()
    hylink_3090x4()
    flexlink_h800x8()
    nimble_h100_2x4()
    fuselink_2x8()
    pcie_8gpu_2socket()
