module goleaf

go 1.19
