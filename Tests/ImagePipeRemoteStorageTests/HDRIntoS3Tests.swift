import Foundation
import ImagePipe
import ImagePipeRemoteStorage
import ImagePipeTestSupport
import Testing

/// HDR originals batched into S3 (moto): the objects stored are the Ultra HDR JPEGs a local batch
/// makes, byte for byte, and libultrahdr reads them back as such.
@Suite(.offThePool) struct HDRIntoS3Tests {
    let directory = TemporaryDirectory(prefix: "imagepipe-hdr-s3")

    @Test func ultraHDRVariantsAreStoredInS3AsTheyAreMadeLocally() throws {
        let moto = try MotoServer.signed()
        let bucket = try moto.makeBucket()
        directory.write("src/iphone.heic", Fixtures.data("images/hdr/iphone-13-pro-max.heic"))
        directory.write("src/ultra-hdr.jpg", Fixtures.data("images/hdr/ultra-hdr.jpg"))
        let variants = ["--variant", "large=1000x1000,jpeg,q80", "--variant", "medium=500x500,webp,q75"]
        let environment = [
            "AWS_ACCESS_KEY_ID": moto.credentials.accessKeyID, "AWS_SECRET_ACCESS_KEY": moto.credentials.secretAccessKey, "HOME": directory.path,
        ]
        let remote = try CommandRunner.run(
            ["batch", directory.url("src"), "--dest", "s3://\(bucket)/site", "--endpoint", moto.endpoint, "--region", "us-east-1"] + variants,
            environment: environment)
        #expect(remote.status == 0, "\(remote.stderr)")
        let local = try CommandRunner.run(["batch", directory.url("src"), "--dest", directory.url("out")] + variants)
        #expect(local.status == 0, "\(local.stderr)")
        var stored: [String] = []
        for name in ["iphone-large.jpg", "ultra-hdr-large.jpg", "iphone-medium.webp"] {
            let object = try #require(try moto.object(bucket, "site/" + name, withBody: true), "\(name)")
            #expect(object.body == (try Data(contentsOf: URL(fileURLWithPath: directory.url("out/" + name)))), "\(name)")
            stored.append(directory.write("s3/" + name, object.body))
        }
        #expect(try HDROracle.isUltraHDR(stored) == [true, true, false])
    }
}
