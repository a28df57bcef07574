# SPDX-License-Identifier: Apache-2.0
# Functions whose line tables tests/unit/test_linetable.c decodes (tests/tools/dump_linetables.py
# compiles this file under each CPython and dumps every code object). Never run.


def loops(n):
    total = 0
    for i in range(n):
        j = 0
        while j < i:
            total += i * j
            j += 1
        else:
            total -= 1
    return total


def multiline(a, b,
              c=3):
    x = (a +
         b *
         c)
    y = [a, b,
         c, x]
    return max(x,
               sum(y),
               key=lambda v: (v,
                              -v))


def tries(d, k):
    try:
        v = d[k]
    except KeyError as e:
        v = str(e)
    except (TypeError, ValueError):
        raise
    else:
        v = v * 2
    finally:
        d.clear()
    with open("/dev/null") as f:
        f.read()
    return v


def gen(n):
    for i in range(n):
        yield i
        yield from range(i)
    return (x * x for x in range(n)
            if x % 2)


class Outer:
    class Inner:
        def method(self):
            return [i for i in range(3)]

    async def coro(self):
        return await self.other()


def one_long_line(x):
    y = [x + 0, x + 1, x + 2, x + 3, x + 4, x + 5, x + 6, x + 7, x + 8, x + 9, x + 10, x + 11, x + 12, x + 13, x + 14, x + 15, x + 16, x + 17, x + 18, x + 19, x + 20, x + 21, x + 22, x + 23, x + 24, x + 25, x + 26, x + 27, x + 28, x + 29, x + 30, x + 31, x + 32, x + 33, x + 34, x + 35, x + 36, x + 37, x + 38, x + 39, x + 40, x + 41, x + 42, x + 43, x + 44, x + 45, x + 46, x + 47, x + 48, x + 49, x + 50, x + 51, x + 52, x + 53, x + 54, x + 55, x + 56, x + 57, x + 58, x + 59, x + 60, x + 61, x + 62, x + 63, x + 64, x + 65, x + 66, x + 67, x + 68, x + 69, x + 70, x + 71, x + 72, x + 73, x + 74, x + 75, x + 76, x + 77, x + 78, x + 79, x + 80, x + 81, x + 82, x + 83, x + 84, x + 85, x + 86, x + 87, x + 88, x + 89, x + 90, x + 91, x + 92, x + 93, x + 94, x + 95, x + 96, x + 97, x + 98, x + 99, x + 100, x + 101, x + 102, x + 103, x + 104, x + 105, x + 106, x + 107, x + 108, x + 109, x + 110, x + 111, x + 112, x + 113, x + 114, x + 115, x + 116, x + 117, x + 118, x + 119, x + 120, x + 121, x + 122, x + 123, x + 124, x + 125, x + 126, x + 127, x + 128, x + 129, x + 130, x + 131, x + 132, x + 133, x + 134, x + 135, x + 136, x + 137, x + 138, x + 139, x + 140, x + 141, x + 142, x + 143, x + 144, x + 145, x + 146, x + 147, x + 148, x + 149, x + 150, x + 151, x + 152, x + 153, x + 154, x + 155, x + 156, x + 157, x + 158, x + 159, x + 160, x + 161, x + 162, x + 163, x + 164, x + 165, x + 166, x + 167, x + 168, x + 169, x + 170, x + 171, x + 172, x + 173, x + 174, x + 175, x + 176, x + 177, x + 178, x + 179, x + 180, x + 181, x + 182, x + 183, x + 184, x + 185, x + 186, x + 187, x + 188, x + 189, x + 190, x + 191, x + 192, x + 193, x + 194, x + 195, x + 196, x + 197, x + 198, x + 199, x + 200, x + 201, x + 202, x + 203, x + 204, x + 205, x + 206, x + 207, x + 208, x + 209, x + 210, x + 211, x + 212, x + 213, x + 214, x + 215, x + 216, x + 217, x + 218, x + 219, x + 220, x + 221, x + 222, x + 223, x + 224, x + 225, x + 226, x + 227, x + 228, x + 229, x + 230, x + 231, x + 232, x + 233, x + 234, x + 235, x + 236, x + 237, x + 238, x + 239, x + 240, x + 241, x + 242, x + 243, x + 244, x + 245, x + 246, x + 247, x + 248, x + 249, x + 250, x + 251, x + 252, x + 253, x + 254, x + 255, x + 256, x + 257, x + 258, x + 259, x + 260, x + 261, x + 262, x + 263, x + 264, x + 265, x + 266, x + 267, x + 268, x + 269, x + 270, x + 271, x + 272, x + 273, x + 274, x + 275, x + 276, x + 277, x + 278, x + 279, x + 280, x + 281, x + 282, x + 283, x + 284, x + 285, x + 286, x + 287, x + 288, x + 289, x + 290, x + 291, x + 292, x + 293, x + 294, x + 295, x + 296, x + 297, x + 298, x + 299]
    return y


def far_columns():
    x = 1;                                                                                                                                                                                                         y = x + 2;                                                                                                     return (x, y, {"k": x,
                                                                                                                                                                                                                                                          "j": y})


def long_function(n):
    acc = 0
    for i in range(n):
        acc += i * 0
        acc += i * 1
        acc += i * 2
        acc += i * 3
        acc += i * 4
        acc += i * 5
        acc += i * 6
        acc += i * 7
        acc += i * 8
        acc += i * 9
        acc += i * 10
        acc += i * 11
        acc += i * 12
        acc += i * 13
        acc += i * 14
        acc += i * 15
        acc += i * 16
        acc += i * 17
        acc += i * 18
        acc += i * 19
        acc += i * 20
        acc += i * 21
        acc += i * 22
        acc += i * 23
        acc += i * 24
        if acc > 25:
            acc -= 25
        acc += i * 26
        acc += i * 27
        acc += i * 28
        acc += i * 29
        acc += i * 30
        acc += i * 31
        acc += i * 32
        acc += i * 33
        acc += i * 34
        acc += i * 35
        acc += i * 36
        acc += i * 37
        acc += i * 38
        acc += i * 39
        acc += i * 40
        acc += i * 41
        acc += i * 42
        acc += i * 43
        acc += i * 44
        acc += i * 45
        acc += i * 46
        acc += i * 47
        acc += i * 48
        acc += i * 49
        acc += i * 50
        acc += i * 51
        acc += i * 52
        acc += i * 53
        acc += i * 54
        acc += i * 55
        acc += i * 56
        acc += i * 57
        acc += i * 58
        acc += i * 59
        acc += i * 60
        acc += i * 61
        acc += i * 62
        acc += i * 63
        acc += i * 64
        acc += i * 65
        acc += i * 66
        acc += i * 67
        acc += i * 68
        acc += i * 69
        acc += i * 70
        acc += i * 71
        acc += i * 72
        acc += i * 73
        acc += i * 74
        if acc > 75:
            acc -= 75
        acc += i * 76
        acc += i * 77
        acc += i * 78
        acc += i * 79
        acc += i * 80
        acc += i * 81
        acc += i * 82
        acc += i * 83
        acc += i * 84
        acc += i * 85
        acc += i * 86
        acc += i * 87
        acc += i * 88
        acc += i * 89
        acc += i * 90
        acc += i * 91
        acc += i * 92
        acc += i * 93
        acc += i * 94
        acc += i * 95
        acc += i * 96
        acc += i * 97
        acc += i * 98
        acc += i * 99
        acc += i * 100
        acc += i * 101
        acc += i * 102
        acc += i * 103
        acc += i * 104
        acc += i * 105
        acc += i * 106
        acc += i * 107
        acc += i * 108
        acc += i * 109
        acc += i * 110
        acc += i * 111
        acc += i * 112
        acc += i * 113
        acc += i * 114
        acc += i * 115
        acc += i * 116
        acc += i * 117
        acc += i * 118
        acc += i * 119
        acc += i * 120
        acc += i * 121
        acc += i * 122
        acc += i * 123
        acc += i * 124
        if acc > 125:
            acc -= 125
        acc += i * 126
        acc += i * 127
        acc += i * 128
        acc += i * 129
        acc += i * 130
        acc += i * 131
        acc += i * 132
        acc += i * 133
        acc += i * 134
        acc += i * 135
        acc += i * 136
        acc += i * 137
        acc += i * 138
        acc += i * 139
        acc += i * 140
        acc += i * 141
        acc += i * 142
        acc += i * 143
        acc += i * 144
        acc += i * 145
        acc += i * 146
        acc += i * 147
        acc += i * 148
        acc += i * 149
        acc += i * 150
        acc += i * 151
        acc += i * 152
        acc += i * 153
        acc += i * 154
        acc += i * 155
        acc += i * 156
        acc += i * 157
        acc += i * 158
        acc += i * 159
        acc += i * 160
        acc += i * 161
        acc += i * 162
        acc += i * 163
        acc += i * 164
        acc += i * 165
        acc += i * 166
        acc += i * 167
        acc += i * 168
        acc += i * 169
        acc += i * 170
        acc += i * 171
        acc += i * 172
        acc += i * 173
        acc += i * 174
        if acc > 175:
            acc -= 175
        acc += i * 176
        acc += i * 177
        acc += i * 178
        acc += i * 179
        acc += i * 180
        acc += i * 181
        acc += i * 182
        acc += i * 183
        acc += i * 184
        acc += i * 185
        acc += i * 186
        acc += i * 187
        acc += i * 188
        acc += i * 189
        acc += i * 190
        acc += i * 191
        acc += i * 192
        acc += i * 193
        acc += i * 194
        acc += i * 195
        acc += i * 196
        acc += i * 197
        acc += i * 198
        acc += i * 199
        acc += i * 200
        acc += i * 201
        acc += i * 202
        acc += i * 203
        acc += i * 204
        acc += i * 205
        acc += i * 206
        acc += i * 207
        acc += i * 208
        acc += i * 209
        acc += i * 210
        acc += i * 211
        acc += i * 212
        acc += i * 213
        acc += i * 214
        acc += i * 215
        acc += i * 216
        acc += i * 217
        acc += i * 218
        acc += i * 219
        acc += i * 220
        acc += i * 221
        acc += i * 222
        acc += i * 223
        acc += i * 224
        if acc > 225:
            acc -= 225
        acc += i * 226
        acc += i * 227
        acc += i * 228
        acc += i * 229
        acc += i * 230
        acc += i * 231
        acc += i * 232
        acc += i * 233
        acc += i * 234
        acc += i * 235
        acc += i * 236
        acc += i * 237
        acc += i * 238
        acc += i * 239
        acc += i * 240
        acc += i * 241
        acc += i * 242
        acc += i * 243
        acc += i * 244
        acc += i * 245
        acc += i * 246
        acc += i * 247
        acc += i * 248
        acc += i * 249
        acc += i * 250
        acc += i * 251
        acc += i * 252
        acc += i * 253
        acc += i * 254
        acc += i * 255
        acc += i * 256
        acc += i * 257
        acc += i * 258
        acc += i * 259
        acc += i * 260
        acc += i * 261
        acc += i * 262
        acc += i * 263
        acc += i * 264
        acc += i * 265
        acc += i * 266
        acc += i * 267
        acc += i * 268
        acc += i * 269
        acc += i * 270
        acc += i * 271
        acc += i * 272
        acc += i * 273
        acc += i * 274
        if acc > 275:
            acc -= 275
        acc += i * 276
        acc += i * 277
        acc += i * 278
        acc += i * 279
        acc += i * 280
        acc += i * 281
        acc += i * 282
        acc += i * 283
        acc += i * 284
        acc += i * 285
        acc += i * 286
        acc += i * 287
        acc += i * 288
        acc += i * 289
        acc += i * 290
        acc += i * 291
        acc += i * 292
        acc += i * 293
        acc += i * 294
        acc += i * 295
        acc += i * 296
        acc += i * 297
        acc += i * 298
        acc += i * 299
        if acc < 0:
            continue





    return acc


def after_gap():
    return 1


def big_gap(n):
    a = n
    doc = """
    filler 0
    filler 1
    filler 2
    filler 3
    filler 4
    filler 5
    filler 6
    filler 7
    filler 8
    filler 9
    filler 10
    filler 11
    filler 12
    filler 13
    filler 14
    filler 15
    filler 16
    filler 17
    filler 18
    filler 19
    filler 20
    filler 21
    filler 22
    filler 23
    filler 24
    filler 25
    filler 26
    filler 27
    filler 28
    filler 29
    filler 30
    filler 31
    filler 32
    filler 33
    filler 34
    filler 35
    filler 36
    filler 37
    filler 38
    filler 39
    filler 40
    filler 41
    filler 42
    filler 43
    filler 44
    filler 45
    filler 46
    filler 47
    filler 48
    filler 49
    filler 50
    filler 51
    filler 52
    filler 53
    filler 54
    filler 55
    filler 56
    filler 57
    filler 58
    filler 59
    filler 60
    filler 61
    filler 62
    filler 63
    filler 64
    filler 65
    filler 66
    filler 67
    filler 68
    filler 69
    filler 70
    filler 71
    filler 72
    filler 73
    filler 74
    filler 75
    filler 76
    filler 77
    filler 78
    filler 79
    filler 80
    filler 81
    filler 82
    filler 83
    filler 84
    filler 85
    filler 86
    filler 87
    filler 88
    filler 89
    filler 90
    filler 91
    filler 92
    filler 93
    filler 94
    filler 95
    filler 96
    filler 97
    filler 98
    filler 99
    filler 100
    filler 101
    filler 102
    filler 103
    filler 104
    filler 105
    filler 106
    filler 107
    filler 108
    filler 109
    filler 110
    filler 111
    filler 112
    filler 113
    filler 114
    filler 115
    filler 116
    filler 117
    filler 118
    filler 119
    filler 120
    filler 121
    filler 122
    filler 123
    filler 124
    filler 125
    filler 126
    filler 127
    filler 128
    filler 129
    filler 130
    filler 131
    filler 132
    filler 133
    filler 134
    filler 135
    filler 136
    filler 137
    filler 138
    filler 139
    filler 140
    filler 141
    filler 142
    filler 143
    filler 144
    filler 145
    filler 146
    filler 147
    filler 148
    filler 149
    filler 150
    filler 151
    filler 152
    filler 153
    filler 154
    filler 155
    filler 156
    filler 157
    filler 158
    filler 159
    filler 160
    filler 161
    filler 162
    filler 163
    filler 164
    filler 165
    filler 166
    filler 167
    filler 168
    filler 169
    filler 170
    filler 171
    filler 172
    filler 173
    filler 174
    filler 175
    filler 176
    filler 177
    filler 178
    filler 179
    filler 180
    filler 181
    filler 182
    filler 183
    filler 184
    filler 185
    filler 186
    filler 187
    filler 188
    filler 189
    filler 190
    filler 191
    filler 192
    filler 193
    filler 194
    filler 195
    filler 196
    filler 197
    filler 198
    filler 199
    """
    b = a + len(doc)
    while b > 0:
        b -= 1
        b -= 2
        b -= 3
        b -= 1
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        # quiet
        b -= 0
    return b

