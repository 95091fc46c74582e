"""A Vulkan ICD file for a driver unpacked into a folder of its own (dpkg-deb -x): the package's
ICD file with the driver library's path made absolute inside that folder, written atomically.
    python ci/relocate_icd.py ROOT ICD LIBRARY OUT
ROOT: the unpacked root; ICD: the package's ICD file under ROOT/usr/share/vulkan/icd.d;
LIBRARY: the driver's path under ROOT (usr/lib/<triplet>/libvulkan_lvp.so); OUT: the new file."""
import json
import os
import sys

root, icd_name, library, out = sys.argv[1:5]
icd = json.load(open(os.path.join(root, "usr/share/vulkan/icd.d", icd_name)))
icd["ICD"]["library_path"] = os.path.join(root, library)
with open(out + ".tmp", "w") as f:
    json.dump(icd, f, indent=1)
os.replace(out + ".tmp", out)
