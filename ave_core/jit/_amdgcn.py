"""Child process: LLVM IR -> AMDGCN assembly and object with llvmlite.

Run as ``python -m ave_core.jit._amdgcn CHIP IN.ll OUT.s OUT.o``. LLVM reports some errors by
aborting the process; running code generation here turns such an abort into a clear error in
the parent (:func:`ave_core.jit.pipeline.mlir_to_amdgcn`) instead of killing it.
"""

import sys


def main() -> int:
    chip, src, out_s, out_o = sys.argv[1:5]
    import llvmlite.binding as llb
    for init in ("initialize_all_targets", "initialize_all_asmprinters"):
        getattr(llb, init)()
    with open(src, encoding="utf-8") as f:
        ll = f.read()
    tm = llb.Target.from_triple("amdgcn-amd-amdhsa").create_target_machine(
        cpu=chip, opt=3, reloc="pic", codemodel="default")

    def fresh():
        # code generation rewrites the module (control-flow annotation): parse anew each time
        mod = llb.parse_assembly(ll)
        mod.triple = "amdgcn-amd-amdhsa"
        mod.data_layout = str(tm.target_data)
        mod.verify()
        return mod
    with open(out_s, "w", encoding="utf-8") as f:
        f.write(tm.emit_assembly(fresh()))
    with open(out_o, "wb") as f:
        f.write(tm.emit_object(fresh()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
