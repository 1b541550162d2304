# A copy and a read of one shared tile in each iteration of a static loop inside a runtime
# loop, no barrier between: the race witnesses name the static iteration (j) too
import ave_core.lang as ave


@ave.kernel(threads=128)
def k(X: ave.Tensor[ave.f32, 2], Y: ave.Tensor[ave.f32, 2]):
    s = ave.alloc((16, 32), ave.f32, space="shared")
    for kt in ave.range(0, 3):
        for j in ave.static_range(2):
            ave.copy(X[kt * 64 + j * 16:kt * 64 + j * 16 + 16, 0:32], s)
            x = ave.load(s, ave.tv_layout(ave.layout(128, 4), ave.layout(4, 1), (16, 32)))
        ave.barrier()
