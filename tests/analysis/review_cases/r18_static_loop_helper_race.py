# As r18_static_loop_race with the static loop in a helper whose variable (kt) is the
# runtime loop's too: the helper's is named kt' in witnesses
import ave_core.lang as ave


def stage(X, s, r0):
    for kt in ave.static_range(2):
        ave.copy(X[r0 + kt * 16:r0 + kt * 16 + 16, 0:32], s)
        x = ave.load(s, ave.tv_layout(ave.layout(128, 4), ave.layout(4, 1), (16, 32)))
    return x


@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):
    s = ave.alloc((16, 32), ave.f32, space="shared")
    for kt in ave.range(0, 3):
        x = stage(X, s, kt * 64)
        ave.barrier()
